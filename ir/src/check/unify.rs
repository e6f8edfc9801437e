//! Element-type variables, their unification, and the inference-time types built on them.
//!
//! Structure (scalar, array of a known rank, tuple, function, shape) is always known when an
//! expression is checked; only element types may be undecided, so only they are variables.
//! A variable is either decided (`Known`) or open with a class: any type, any numeric type,
//! or any float type. Integer literals start as open numeric variables and float literals as
//! open float variables; unification narrows classes, and whatever is still open at the end
//! takes its default (see [`Vars::resolve`]).

use crate::types::{Dim, ElemType, Type};

/// An element-type variable: an index into [`Vars`].
pub(crate) type V = usize;

/// What an open variable may still become: a set of element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Any element type.
    Any,
    /// An integer or float type.
    Numeric,
    /// `f32` or `f64`.
    Float,
    /// One of the eight integer types.
    Int,
    /// An integer type or `bool` (the operand of `!`).
    IntOrBool,
    /// `bool` alone.
    Bool,
    /// Any other set of types, as a bit mask over [`ElemType::ALL`].
    Mask(u16),
}

impl Class {
    fn mask(self) -> u16 {
        let of = |f: fn(ElemType) -> bool| {
            ElemType::ALL.iter().enumerate().filter(|(_, t)| f(**t)).fold(0u16, |m, (i, _)| m | (1 << i))
        };
        match self {
            Class::Any => of(|_| true),
            Class::Numeric => of(ElemType::is_numeric),
            Class::Float => of(ElemType::is_float),
            Class::Int => of(ElemType::is_int),
            Class::IntOrBool => of(|t| t.is_int() || t == ElemType::Bool),
            Class::Bool => of(|t| t == ElemType::Bool),
            Class::Mask(m) => m,
        }
    }

    fn from_mask(m: u16) -> Class {
        [Class::Any, Class::Numeric, Class::Float, Class::Int, Class::IntOrBool, Class::Bool]
            .into_iter()
            .find(|c| c.mask() == m)
            .unwrap_or(Class::Mask(m))
    }

    /// The types both classes admit; `None` when there are none.
    fn meet(self, other: Class) -> Option<Class> {
        let m = self.mask() & other.mask();
        (m != 0).then(|| Class::from_mask(m))
    }

    fn admits(self, t: ElemType) -> bool {
        ElemType::ALL.iter().position(|x| *x == t).is_some_and(|i| self.mask() & (1 << i) != 0)
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    Known(ElemType),
    Open { class: Class, int_lit: bool, float_lit: bool },
}

/// Why two variables could not be unified.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clash {
    /// A float literal met an integer type.
    pub float_lit_as_int: bool,
}

/// The union-find store of element-type variables.
#[derive(Debug, Default)]
pub(crate) struct Vars {
    parent: Vec<V>,
    state: Vec<State>,
}

impl Vars {
    fn push(&mut self, s: State) -> V {
        let v = self.parent.len();
        self.parent.push(v);
        self.state.push(s);
        v
    }

    /// A fresh open variable of `class`.
    pub fn open(&mut self, class: Class) -> V {
        self.push(State::Open { class, int_lit: false, float_lit: false })
    }

    /// The variable of an integer literal.
    pub fn int_lit(&mut self) -> V {
        self.push(State::Open { class: Class::Numeric, int_lit: true, float_lit: false })
    }

    /// The variable of a hexadecimal literal (integers only).
    pub fn hex_lit(&mut self) -> V {
        self.push(State::Open { class: Class::Int, int_lit: true, float_lit: false })
    }

    /// The variable of a float literal.
    pub fn float_lit(&mut self) -> V {
        self.push(State::Open { class: Class::Float, int_lit: false, float_lit: true })
    }

    /// A variable decided as `t`.
    pub fn known(&mut self, t: ElemType) -> V {
        self.push(State::Known(t))
    }

    fn find(&mut self, v: V) -> V {
        let mut r = v;
        while let Some(&p) = self.parent.get(r) {
            if p == r {
                break;
            }
            r = p;
        }
        let mut c = v;
        while let Some(&p) = self.parent.get(c) {
            if p == r || p == c {
                break;
            }
            self.parent[c] = r;
            c = p;
        }
        r
    }

    fn state(&mut self, v: V) -> (V, State) {
        let r = self.find(v);
        let s = self.state.get(r).copied().unwrap_or(State::Open {
            class: Class::Any,
            int_lit: false,
            float_lit: false,
        });
        (r, s)
    }

    /// Makes `a` and `b` the same type, or says why they cannot be; on failure nothing
    /// changes.
    pub fn unify(&mut self, a: V, b: V) -> Result<(), Clash> {
        let (ra, sa) = self.state(a);
        let (rb, sb) = self.state(b);
        if ra == rb {
            return Ok(());
        }
        let merged = match (sa, sb) {
            (State::Known(x), State::Known(y)) => {
                if x != y {
                    return Err(Clash { float_lit_as_int: false });
                }
                State::Known(x)
            }
            (State::Known(x), State::Open { class, float_lit, .. })
            | (State::Open { class, float_lit, .. }, State::Known(x)) => {
                if !class.admits(x) {
                    return Err(Clash { float_lit_as_int: float_lit && x.is_int() });
                }
                State::Known(x)
            }
            (
                State::Open { class: ca, int_lit: ia, float_lit: fa },
                State::Open { class: cb, int_lit: ib, float_lit: fb },
            ) => match ca.meet(cb) {
                Some(class) => State::Open { class, int_lit: ia || ib, float_lit: fa || fb },
                None => {
                    return Err(Clash {
                        float_lit_as_int: (fa && cb == Class::Int) || (fb && ca == Class::Int),
                    })
                }
            },
        };
        if let Some(p) = self.parent.get_mut(rb) {
            *p = ra;
        }
        if let Some(s) = self.state.get_mut(ra) {
            *s = merged;
        }
        Ok(())
    }

    /// Requires `v` to be of `class`.
    pub fn constrain(&mut self, v: V, class: Class) -> Result<(), Clash> {
        let c = self.open(class);
        self.unify(v, c)
    }

    /// `v` in words, for messages: `f32`, `an integer literal`, `a float type`, ...
    pub fn describe(&mut self, v: V) -> String {
        match self.state(v).1 {
            State::Known(t) => t.name().to_string(),
            State::Open { float_lit: true, .. } => "a float literal".into(),
            State::Open { class: Class::Float, .. } => "a float type".into(),
            State::Open { int_lit: true, .. } => "an integer literal".into(),
            State::Open { class: Class::Numeric, .. } => "a numeric type".into(),
            State::Open { class: Class::Int, .. } => "an integer type".into(),
            State::Open { class: Class::IntOrBool, .. } => "an integer type or bool".into(),
            State::Open { class: Class::Bool, .. } => "bool".into(),
            State::Open { class: Class::Any, .. } => "an undetermined type".into(),
            State::Open { class: Class::Mask(_), .. } => "a type not yet decided".into(),
        }
    }

    /// `v` as the element type of an array, in short: `f32`, `float`, `num`, `_`.
    fn describe_elem(&mut self, v: V) -> String {
        match self.state(v).1 {
            State::Known(t) => t.name().to_string(),
            State::Open { class: Class::Float, .. } => "float".into(),
            State::Open { class: Class::Numeric, .. } => "num".into(),
            State::Open { class: Class::Int, .. } => "int".into(),
            State::Open { .. } => "_".into(),
        }
    }

    /// The final type of `v`: its decided type, else the default of its class (float → `f64`,
    /// numeric → `i64`, and an unconstrained variable, such as the parameter of a function
    /// nothing uses, `i64`). The default is recorded, so every use of `v` agrees.
    pub fn resolve(&mut self, v: V) -> ElemType {
        let (r, s) = self.state(v);
        let t = match s {
            State::Known(t) => return t,
            State::Open { class, .. } => [ElemType::I64, ElemType::F64, ElemType::Bool]
                .into_iter()
                .find(|t| class.admits(*t))
                .or_else(|| ElemType::ALL.into_iter().find(|t| class.admits(*t)))
                .unwrap_or(ElemType::I64),
        };
        if let Some(s) = self.state.get_mut(r) {
            *s = State::Known(t);
        }
        t
    }

    /// Resolves an inference type into a final [`Type`].
    pub fn resolve_it(&mut self, it: &IT) -> Type {
        match it {
            IT::Scalar(v) => Type::Scalar(self.resolve(*v)),
            IT::Array { elem, shape } => Type::Array { elem: self.resolve(*elem), shape: shape.clone() },
            IT::Tuple(vs) => Type::Tuple(vs.iter().map(|v| self.resolve(*v)).collect()),
            IT::Group(parts) => Type::Group(parts.iter().map(|p| self.resolve_it(p)).collect()),
            IT::Func { params, ret } => Type::Func {
                params: params.iter().map(|p| self.resolve_it(p)).collect(),
                ret: Box::new(self.resolve_it(ret)),
            },
            IT::Shape(r) => Type::ShapeArg(*r),
        }
    }

    /// A part of a tuple, group or function type in short.
    fn show_part(&mut self, it: &IT) -> String {
        match it {
            IT::Scalar(v) => self.describe_elem(*v),
            IT::Tuple(vs) => {
                let parts: Vec<String> = vs.iter().map(|v| self.describe_elem(*v)).collect();
                format!("({})", parts.join(", "))
            }
            other => self.show(other),
        }
    }

    /// Makes two inference types of the same structure have the same element types; `Err`
    /// when their structures differ (ranks, arities, kinds) or element types clash.
    pub fn unify_it(&mut self, a: &IT, b: &IT) -> Result<(), Option<Clash>> {
        match (a, b) {
            (IT::Scalar(x), IT::Scalar(y)) => self.unify(*x, *y).map_err(Some),
            (IT::Array { elem: x, shape: sa }, IT::Array { elem: y, shape: sb }) if sa.len() == sb.len() => {
                self.unify(*x, *y).map_err(Some)
            }
            (IT::Tuple(xs), IT::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.unify(*x, *y).map_err(Some)?;
                }
                Ok(())
            }
            (IT::Group(xs), IT::Group(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.unify_it(x, y)?;
                }
                Ok(())
            }
            (IT::Func { params: px, ret: rx }, IT::Func { params: py, ret: ry }) if px.len() == py.len() => {
                for (x, y) in px.iter().zip(py) {
                    self.unify_it(x, y)?;
                }
                self.unify_it(rx, ry)
            }
            (IT::Shape(x), IT::Shape(y)) if x == y => Ok(()),
            _ => Err(None),
        }
    }

    /// An inference type in words, for messages.
    pub fn show(&mut self, it: &IT) -> String {
        match it {
            IT::Scalar(v) => self.describe(*v),
            IT::Array { elem, shape } => {
                let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                format!("{}[{}]", self.describe_elem(*elem), dims.join(", "))
            }
            IT::Tuple(vs) => {
                let parts: Vec<String> = vs.iter().map(|v| self.describe_elem(*v)).collect();
                format!("a tuple ({})", parts.join(", "))
            }
            IT::Group(parts) => {
                let parts: Vec<String> = parts.iter().map(|p| self.show_part(p)).collect();
                format!("a group ({})", parts.join(", "))
            }
            IT::Func { params, ret } => {
                let mut s = String::from("a function ");
                for p in params {
                    let t = self.show_part(p);
                    s.push_str(&t);
                    s.push_str(" -> ");
                }
                let r = match &**ret {
                    IT::Scalar(v) => self.describe_elem(*v),
                    other => self.show(other),
                };
                s.push_str(&r);
                s
            }
            IT::Shape(r) => format!("a shape of rank {r}"),
        }
    }
}

/// The type of an expression while checking: like [`Type`], with element-type variables.
#[derive(Clone, Debug)]
pub(crate) enum IT {
    /// A scalar.
    Scalar(V),
    /// An array; its rank and dimensions are known.
    Array {
        /// Element type.
        elem: V,
        /// Dimensions, outermost first.
        shape: Vec<Dim>,
    },
    /// A tuple of scalars (a lambda's parameter or result, an `iterate` state).
    Tuple(Vec<V>),
    /// A tuple at array level with at least one array part: a group, or a loop's state.
    Group(Vec<IT>),
    /// A scalar function.
    Func {
        /// Parameter types: `Scalar` or `Tuple`.
        params: Vec<IT>,
        /// Result: `Scalar` or `Tuple`.
        ret: Box<IT>,
    },
    /// A shape argument of this rank.
    Shape(usize),
}
